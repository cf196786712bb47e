from .overwatch import initialize_overwatch
