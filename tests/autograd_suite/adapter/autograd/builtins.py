"""autograd's containers are Python's (srcad differentiates through them as they are)."""
import builtins

dict, list, tuple, isinstance, type = (builtins.dict, builtins.list, builtins.tuple,
                                       builtins.isinstance, builtins.type)
SequenceBox = DictBox = ()  # (no value is a box)
