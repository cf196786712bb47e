# Copyright (c) Meta Platforms, Inc. and affiliates.
# This software may be used and distributed according to the terms of the Llama 2 Community License Agreement.

from llama_cookbook.model_checkpointing.checkpoint_handler import (
    load_model_checkpoint,
    save_fsdp_model_checkpoint_full,
    save_peft_checkpoint,
    save_model_checkpoint,
    load_optimizer_checkpoint,
    save_optimizer_checkpoint,
    save_model_and_optimizer_sharded,
    load_model_sharded,
    load_sharded_model_single_gpu
)
