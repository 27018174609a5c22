"""A small package laid out like real kernel projects: kernels import helpers from sibling modules."""
