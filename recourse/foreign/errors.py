"""The errors a foreign model is refused with: one base class the app and the command line
catch, and the kinds a caller may tell apart. Their own module, so that the loaders and the
checks of a file's bytes, which both raise them, need not import each other."""


class ForeignModelError(ValueError):
    """A foreign model that does not load or does not match its card; the message says which."""


class OutputCountError(ForeignModelError):
    """The model returns another number of outputs per image than its card declares."""


class UnsafeModelError(ForeignModelError):
    """A model file that asks its loader to run code or read other files; never loaded."""
