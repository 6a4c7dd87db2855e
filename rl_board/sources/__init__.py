"""What is under a logs root: served-root confinement and the catalogue of sources."""
