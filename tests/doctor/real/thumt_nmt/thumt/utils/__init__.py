from thumt.utils.hparams import HParams
from thumt.utils.inference import beam_search, argmax_decoding
from thumt.utils.evaluation import evaluate
from thumt.utils.checkpoint import save, latest_checkpoint
from thumt.utils.scope import scope, get_scope, unique_name
from thumt.utils.misc import get_global_step, set_global_step
from thumt.utils.convert_params import params_to_vec, vec_to_params
