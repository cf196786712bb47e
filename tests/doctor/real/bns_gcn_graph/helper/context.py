from helper.feature_buffer import *
from helper.reducer import *

buffer = Buffer()
reducer = Reducer()
