"""The ``electa`` command line: a thin edge over :class:`electa.engine.Engine`."""
