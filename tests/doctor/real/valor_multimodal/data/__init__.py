from .data import (TxtMapper, VideoMapper,AudioMapper)

from .loader import PrefetchLoader, MetaLoader, AccumMetaLoader




