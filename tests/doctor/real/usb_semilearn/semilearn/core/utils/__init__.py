# Copyright (c) Microsoft Corporation.
# Licensed under the MIT License.


from .build import *
from .misc import *
from .registry import *