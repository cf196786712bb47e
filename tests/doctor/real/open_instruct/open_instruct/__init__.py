try:
    from open_instruct._version import __version__
except ImportError:
    __version__ = "0.0.0"
