# Copyright (c) CAIRI AI Lab. All rights reserved

from .config_utils import Config
from .main_utils import (print_log, output_namespace, collect_env, check_dir, 
                        get_dataset, measure_throughput, load_config, update_config, get_dist_info)
from .parser import create_parser, default_parser
from .predrnn_utils import (reserve_schedule_sampling_exp, schedule_sampling, reshape_patch,
                        reshape_patch_back)
from .prednet_utils import get_initial_states
from .visualization import (show_video_line, show_video_gif_multiple, show_video_gif_single,
                        show_heatmap_on_image, show_taxibj, show_weather_bench)

from .callbacks import SetupCallback, EpochEndCallback, BestCheckpointCallback
from .mmvp_utils import build_similarity_matrix, sim_matrix_postprocess, sim_matrix_interpolate, cum_multiply


__all__ = [
    'Config', 'create_parser', 'default_parser',
    'print_log', 'output_namespace', 'collect_env', 'check_dir',
    'get_dataset', 'measure_throughput', 'load_config', 'update_config',
    'get_dist_info',
    'reserve_schedule_sampling_exp', 'schedule_sampling', 'reshape_patch', 'reshape_patch_back',
    'get_initial_states',
    'show_video_line', 'show_video_gif_multiple', 'show_video_gif_single', 'show_heatmap_on_image',
    'show_taxibj', 'show_weather_bench',
    'SetupCallback', 'EpochEndCallback', 'BestCheckpointCallback',
    'build_similarity_matrix', 'sim_matrix_postprocess', 'sim_matrix_interpolate', 'cum_multiply'    
]