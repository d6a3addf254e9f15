"""Boot and supervise worker processes: the command line, the inline pool and worker nodes."""
