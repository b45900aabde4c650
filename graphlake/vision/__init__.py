"""Video I/O on the vision extra (PyAV): frames and clips of a recording at session times."""
