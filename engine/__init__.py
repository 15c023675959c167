"""The one orchestration layer: explain an example with methods, evaluate a slice, benchmark;
used by the command line, the Python API and the app's services."""
