from .dataset_cls import (
    ImageTextDataset, 
    LengthGroupedVideoTextDataset,
    ImageDataset,
    VideoDataset,
)

from .dataloaders import (
    create_image_text_dataloaders, 
    create_length_grouped_video_text_dataloader,
    create_mixed_dataloaders,
)