class EarlyStopping(Exception):
    """Raised when stopping training b/c no improvement in validation loss"""
    pass
