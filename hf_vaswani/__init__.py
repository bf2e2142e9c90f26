"""hf_vaswani: the Transformer of Vaswani et al. (2017) as a Hugging Face `transformers` model.

Importing this package registers the model with the Auto classes (`AutoConfig`, `AutoModel`,
`AutoModelForSeq2SeqLM`) and marks its classes for `register_for_auto_class`, so that `save_pretrained` and
`push_to_hub` write the modeling code and the `auto_map` that `trust_remote_code=True` needs.
"""

from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

from .configuration_vaswani import VaswaniConfig
from .modeling_vaswani import (
    VaswaniDecoder,
    VaswaniEncoder,
    VaswaniForConditionalGeneration,
    VaswaniModel,
    VaswaniPreTrainedModel,
)
from .pipeline_vaswani import VaswaniTranslationPipeline

__version__ = "0.1.0"

AutoConfig.register(VaswaniConfig.model_type, VaswaniConfig, exist_ok=True)
AutoModel.register(VaswaniConfig, VaswaniModel, exist_ok=True)
AutoModelForSeq2SeqLM.register(VaswaniConfig, VaswaniForConditionalGeneration, exist_ok=True)
VaswaniConfig.register_for_auto_class()
VaswaniModel.register_for_auto_class("AutoModel")
VaswaniForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")

__all__ = [
    "VaswaniConfig",
    "VaswaniDecoder",
    "VaswaniEncoder",
    "VaswaniForConditionalGeneration",
    "VaswaniModel",
    "VaswaniPreTrainedModel",
    "VaswaniTranslationPipeline",
]
