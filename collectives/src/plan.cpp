// Placeholder until the real plan lands.
