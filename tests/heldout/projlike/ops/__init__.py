from .common import EPS as DEFAULT_EPS  # noqa: F401
