"""``triton.tools.tensor_descriptor``: host-side tensor descriptors (TMA), not supported yet
by Trident's launch path; creating one says so."""


class TensorDescriptor:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("host TensorDescriptor arguments are not supported by Trident yet")

    @classmethod
    def from_tensor(cls, *args, **kwargs):
        return cls(*args, **kwargs)
