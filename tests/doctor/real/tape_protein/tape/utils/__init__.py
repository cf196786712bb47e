from .utils import int_or_str  # noqa: F401
from .utils import check_is_file  # noqa: F401
from .utils import check_is_dir  # noqa: F401
from .utils import path_to_datetime  # noqa: F401
from .utils import get_expname  # noqa: F401
from .utils import get_effective_num_gpus  # noqa: F401
from .utils import get_effective_batch_size  # noqa: F401
from .utils import get_num_train_optimization_steps  # noqa: F401
from .utils import set_random_seeds  # noqa: F401
from .utils import MetricsAccumulator  # noqa: F401
from .utils import wrap_cuda_oom_error  # noqa: F401
from .utils import write_lmdb  # noqa: F401
from .utils import IncrementalNPZ  # noqa: F401

from .setup_utils import setup_logging  # noqa: F401
from .setup_utils import setup_optimizer  # noqa: F401
from .setup_utils import setup_dataset  # noqa: F401
from .setup_utils import setup_loader  # noqa: F401
from .setup_utils import setup_distributed  # noqa: F401

from .distributed_utils import barrier_if_distributed  # noqa: F401
from .distributed_utils import reduce_scalar  # noqa: F401
from .distributed_utils import launch_process_group  # noqa: F401
