"""'Hierarchical Universal Language Conditioned Policies implementation in pytorch
:copyright: 2022 by Oier Mees
:license: MIT, see LICENSE for more details.
"""

__version__ = "0.0.1"
__project__ = "HULC"
__author__ = "Oier Mees"
__license__ = "MIT"
__email__ = "meeso@informatik.uni-freiburg.de"
