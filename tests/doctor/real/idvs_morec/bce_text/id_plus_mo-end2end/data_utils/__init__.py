
from .utils import *
from .preprocess import read_news, read_news_bert, get_doc_input_bert, read_behaviors
from .dataset import BuildTrainDataset, BuildEvalDataset, SequentialDistributedSampler
from .metrics import eval_model, get_bert_embeddings, get_id_embeddings
from .special import read_behaviors_special, eval_model_special

