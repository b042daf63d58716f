"""What every chapter shares: the notebook setup and the CPU-stacks section."""
