"""Attack: os._exit(0) while being imported (a clean-looking exit with no answer)."""

import os

os._exit(0)
