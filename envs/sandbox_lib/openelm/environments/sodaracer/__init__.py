"""The Sodarace domain, as far as sandboxed programs use it: the walker API."""
