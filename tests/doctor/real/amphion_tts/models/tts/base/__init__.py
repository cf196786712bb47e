# Copyright (c) 2023 Amphion.
#
# This source code is licensed under the MIT license found in the
# LICENSE file in the root directory of this source tree.

# from .tts_inferece import TTSInference
from .tts_trainer import TTSTrainer
