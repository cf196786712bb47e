from .save_annotation import (
    save_annotation, save_instance_annotation, save_panoptic_annotation, save_center_image, save_heatmap_image,
    save_heatmap_and_center_image, save_offset_image)
from .flow_vis import flow_compute_color
from .utils import AverageMeter
from .debug import save_debug_images
