"""evalfarm's stand-in for the parts of OpenELM that sandboxed programs import (see ../README.md)."""
