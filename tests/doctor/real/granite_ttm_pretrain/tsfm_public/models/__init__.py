# Copyright contributors to the TSFM project
#
from . import flowstate, patchtst_fm, tinytimemixer, tspulse
