"""OpenELM's environments, as far as sandboxed programs use them."""
