from molbart.data.base import _AbsDataModule
from molbart.data.base import MoleculeListDataModule
from molbart.data.base import ReactionListDataModule
from molbart.data.datamodules import SynthesisDataModule
from molbart.data.data_collection import DataCollection
