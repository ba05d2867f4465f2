"""unmask: diffusion language model inference (ctypes bindings of libunmask's C ABI)."""
from .api import (Engine, InvalidArgument, Model, ModelFormatError, ModelIOError, OutOfBudget, QueueFull, Request,
                  Result, Tokenizer, TooLong, UnmaskError, Unsupported, generate_params, parameter_names, plan,
                  version)

__all__ = ["Engine", "InvalidArgument", "Model", "ModelFormatError", "ModelIOError", "OutOfBudget", "QueueFull",
           "Request", "Result", "Tokenizer", "TooLong", "UnmaskError", "Unsupported", "generate_params",
           "parameter_names", "plan", "version"]
