import data
