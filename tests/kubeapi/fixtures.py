"""pytest fixtures for the Kubernetes API emulator (filled in by the emulator's module)."""
