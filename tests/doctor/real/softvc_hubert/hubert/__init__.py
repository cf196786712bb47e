from .model import (
    Hubert,
    HubertDiscrete,
    HubertSoft,
)
