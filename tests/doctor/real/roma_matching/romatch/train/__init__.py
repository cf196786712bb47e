from .train import train_k_epochs
