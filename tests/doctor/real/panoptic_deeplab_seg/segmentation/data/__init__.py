from .build import (
    build_dataset_from_cfg, build_train_loader_from_cfg, build_test_loader_from_cfg)
