#include "fit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "clbo/core/error.hpp"
#include "clbo/sim/cluster.hpp"
#include "simulate_measurements.hpp"

namespace clbo::sim {

namespace {

constexpr double kStep = 0.01;  // relative step of the finite-difference Jacobian

// (section, key) of a dotted field.
std::pair<std::string, std::string> split(const std::string& field) {
  const size_t dot = field.find('.');
  return {field.substr(0, dot), field.substr(dot + 1)};
}

// Bounds of each field's value.
std::pair<double, double> bounds(const std::string& field) {
  if (field == "fabric.achievable_fraction" || field == "fabric.efficiency") return {1e-4, 1.0};
  // A network hop costs microseconds over RDMA and up to a few hundred over TCP sockets; a
  // millisecond is a generous ceiling, and keeps the latency from standing in for a
  // bandwidth effect.
  if (field == "fabric.software_latency_us") return {0.1, 1000.0};
  return {1e-3, 1e5};  // GB/s
}

double node_net_GBps(const nlohmann::json& c) {
  return parse_cluster(c, "calibration").node_net_Bps() / 1e9;
}

// The base's value of a field, or the start a fit takes when it has none.
double initial(const nlohmann::json& base, const FitSet& set, const std::string& field) {
  const auto [sec, key] = split(field);
  if (field == "topology.uplink_GBps") {
    if (base.contains("topology") && base["topology"].value("type", "") == "two_level" &&
        base["topology"].contains("uplink_GBps") && set.nodes_per_leaf == 0)
      return base["topology"]["uplink_GBps"].get<double>();
    // A ring crosses each uplink with one flow per direction, so the uplink matters when it
    // is slower than a node's network rate: start at half of it.
    return node_net_GBps(base) / 2;
  }
  if (base.contains(sec) && base[sec].is_object() && base[sec].contains(key) &&
      base[sec][key].is_number())
    return base[sec][key].get<double>();
  if (field == "fabric.software_latency_us") return 14.0;  // NCCL's network hop (Simple)
  return 1.0;                                              // fractions
}

// Whether the start states the field (else the fit starts from a default).
bool has_value(const nlohmann::json& start, const FitSet& set, const std::string& field) {
  const auto [sec, key] = split(field);
  if (field == "topology.uplink_GBps")
    return set.nodes_per_leaf == 0 && start.contains("topology") &&
           start["topology"].value("type", "") == "two_level" &&
           start["topology"].contains("uplink_GBps");
  return start.contains(sec) && start[sec].is_object() && start[sec].contains(key) &&
         start[sec][key].is_number();
}

double round4(double v) {
  if (v == 0) return 0;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::abs(v))));
  return std::round(v * scale) / scale;
}

// Solves a small dense system by Gaussian elimination with partial pivoting.
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t c = 0; c < n; ++c) {
    size_t piv = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    std::swap(a[c], a[piv]);
    std::swap(b[c], b[piv]);
    if (std::abs(a[c][c]) < 1e-300) return std::vector<double>(n, 0);
    for (size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n, 0);
  for (size_t i = n; i-- > 0;) {
    double s = b[i];
    for (size_t k = i + 1; k < n; ++k) s -= a[i][k] * x[k];
    x[i] = s / a[i][i];
  }
  return x;
}

}  // namespace

std::string FitSet::describe() const {
  std::string s = fmt::format("{}", fmt::join(fields, ", "));
  if (nodes_per_leaf > 0) s += fmt::format(" (two-level tree, {} nodes per leaf)", nodes_per_leaf);
  return s.empty() ? "no parameters" : s;
}

std::string network_rate_field(const nlohmann::json& base) {
  const bool tcp = base.contains("fabric") && base["fabric"].value("type", "") == "tcp";
  return tcp ? "fabric.achievable_fraction" : "fabric.efficiency";
}

std::vector<std::string> fittable_fields(const nlohmann::json& base) {
  std::vector<std::string> f = {"intra.bandwidth_GBps", network_rate_field(base),
                                "fabric.software_latency_us"};
  if (!base.contains("xml")) f.push_back("topology.uplink_GBps");
  return f;
}

nlohmann::json apply_fit(const nlohmann::json& base, const FitSet& set,
                         const std::vector<double>& values) {
  nlohmann::json c = base;
  for (size_t i = 0; i < set.fields.size(); ++i) {
    const auto [sec, key] = split(set.fields[i]);
    if (!c.contains(sec) || !c[sec].is_object()) c[sec] = nlohmann::json::object();
    if (set.fields[i] == "topology.uplink_GBps") {
      nlohmann::json& t = c["topology"];
      const double sw = t.value("switch_latency_us", 1.0);
      const int leaf = set.nodes_per_leaf > 0 ? set.nodes_per_leaf : t.value("nodes_per_leaf", 0);
      t = {{"type", "two_level"},
           {"nodes_per_leaf", leaf},
           {"uplink_GBps", values[i]},
           {"switch_latency_us", sw}};
      continue;
    }
    c[sec][key] = values[i];
  }
  return c;
}

FitResult fit_parameters(const nlohmann::json& base, const nlohmann::json& start, const FitSet& set,
                         const std::vector<Measurement>& ms, const std::string& where,
                         const std::function<void(const std::string&)>& progress) {
  const size_t k = set.fields.size(), n = ms.size();
  FitResult res;
  res.set = set;
  std::vector<double> theta(k), lo(k), hi(k);
  for (size_t j = 0; j < k; ++j) {
    const auto [a, b] = bounds(set.fields[j]);
    lo[j] = std::log(a);
    hi[j] = std::log(b);
    theta[j] = std::clamp(std::log(initial(start, set, set.fields[j])), lo[j], hi[j]);
  }
  auto values_of = [&](const std::vector<double>& t) {
    std::vector<double> v(k);
    for (size_t j = 0; j < k; ++j) v[j] = std::exp(t[j]);
    return v;
  };
  auto residuals = [&](const std::vector<double>& v, std::vector<double>* simulated) {
    const nlohmann::json c = apply_fit(base, set, v);
    const std::vector<double> sim = simulate_measurements(parse_cluster(c, where), ms);
    ++res.evaluations;
    std::vector<double> r(n);
    for (size_t i = 0; i < n; ++i) r[i] = std::log(sim[i] / ms[i].measured);
    if (simulated) *simulated = sim;
    return r;
  };
  auto cost = [](const std::vector<double>& r) {
    double s = 0;
    for (double x : r) s += x * x;
    return s;
  };
  std::vector<double> r = residuals(values_of(theta), nullptr);
  double c0 = cost(r), lambda = 1e-2;
  // A rate or latency the start does not set (a newly added term) starts at the best of a
  // coarse grid: the simulator's choices (NCCL's protocol and algorithm) make the cost jump,
  // and a local method started far away can stop at a jump. The uplink stays where it binds
  // (half the NIC rate): the grid's best alone would be an uplink too fast to matter.
  for (size_t j = 0; j < k; ++j) {
    if (has_value(start, set, set.fields[j]) || set.fields[j] == "topology.uplink_GBps") continue;
    for (double f : {0.01, 0.1, 10.0, 100.0}) {
      std::vector<double> t = theta;
      t[j] = std::clamp(theta[j] + std::log(f), lo[j], hi[j]);
      if (t[j] == theta[j]) continue;
      const std::vector<double> rt = residuals(values_of(t), nullptr);
      if (cost(rt) < c0) theta = t, r = rt, c0 = cost(rt);
    }
  }
  for (int iter = 0; iter < 25 && k > 0; ++iter) {
    std::vector<std::vector<double>> jac(n, std::vector<double>(k));
    for (size_t j = 0; j < k; ++j) {
      std::vector<double> t = theta;
      const double h = t[j] + kStep > hi[j] ? -kStep : kStep;
      t[j] += h;
      const std::vector<double> rj = residuals(values_of(t), nullptr);
      double norm = 0;
      for (size_t i = 0; i < n; ++i) {
        jac[i][j] = (rj[i] - r[i]) / h;
        norm += std::abs(jac[i][j]);
      }
      // At the start a parameter nothing depends on cannot be fitted; later it has only
      // moved to where it no longer matters (an uplink faster than the NICs) and stays.
      if (norm < 1e-9 && iter == 0)
        throw InputError(where, "fit", set.fields[j],
                         "cannot be fitted: no measurement depends on it (its simulated values "
                         "do not change)");
    }
    std::vector<std::vector<double>> a(k, std::vector<double>(k, 0));
    std::vector<double> g(k, 0);
    for (size_t i = 0; i < n; ++i)
      for (size_t p = 0; p < k; ++p) {
        g[p] += jac[i][p] * r[i];
        for (size_t q = 0; q < k; ++q) a[p][q] += jac[i][p] * jac[i][q];
      }
    // A parameter held at a bound that the gradient pushes past stays there this step.
    std::vector<bool> held(k, false);
    for (size_t p = 0; p < k; ++p)
      held[p] = (theta[p] >= hi[p] && g[p] < 0) || (theta[p] <= lo[p] && g[p] > 0);
    bool accepted = false;
    double moved = 0;
    while (lambda < 1e10) {
      std::vector<std::vector<double>> damped = a;
      std::vector<double> minus_g(k);
      for (size_t p = 0; p < k; ++p) {
        damped[p][p] += lambda * std::max(a[p][p], 1e-12);
        minus_g[p] = -g[p];
        if (!held[p]) continue;
        for (size_t q = 0; q < k; ++q) damped[p][q] = damped[q][p] = 0;
        damped[p][p] = 1;
        minus_g[p] = 0;
      }
      const std::vector<double> delta = solve(damped, minus_g);
      std::vector<double> t = theta;
      moved = 0;
      for (size_t p = 0; p < k; ++p) {
        t[p] = std::clamp(t[p] + delta[p], lo[p], hi[p]);
        moved = std::max(moved, std::abs(t[p] - theta[p]));
      }
      if (moved < 1e-9) break;
      const std::vector<double> rt = residuals(values_of(t), nullptr);
      const double ct = cost(rt);
      if (ct < c0) {
        accepted = true;
        const double gain = (c0 - ct) / std::max(c0, 1e-300);
        theta = t;
        r = rt;
        c0 = ct;
        lambda = std::max(lambda / 3, 1e-7);
        // Converged when the fit improves by less than 1e-6 of its cost.
        if (gain < 1e-6) moved = 0;
        break;
      }
      lambda *= 4;
    }
    if (!accepted || moved < 1e-7) break;
  }
  // Report what the preset will say: the values rounded to 4 significant digits.
  res.values = values_of(theta);
  for (double& v : res.values) v = round4(v);
  res.cluster = apply_fit(base, set, res.values);
  r = residuals(res.values, &res.simulated);
  res.residual.resize(n);
  double rss = 0;
  for (size_t i = 0; i < n; ++i) {
    res.residual[i] = res.simulated[i] / ms[i].measured - 1;
    res.worst = std::max(res.worst, std::abs(res.residual[i]));
    rss += r[i] * r[i];
  }
  const double dn = static_cast<double>(n);
  res.bic = dn * std::log(std::max(rss / dn, 1e-30)) +
            static_cast<double>(k + (set.nodes_per_leaf > 0 ? 1 : 0)) * std::log(dn);
  if (progress) {
    std::string vals;
    for (size_t j = 0; j < k; ++j)
      vals += fmt::format("{}{} = {}", j ? ", " : "", set.fields[j], res.values[j]);
    progress(fmt::format("fit {}: worst residual {:.2f}% ({} simulations): {}", set.describe(),
                         100 * res.worst, res.evaluations, vals));
  }
  return res;
}

}  // namespace clbo::sim
