"""Binary cross-entropy for a judge that corrects a prior instead of starting from nothing.

A cross-encoder trained on an analyst's thousand verdicts starts from a new, random head
and reads pairs worse than the bi-encoder it is meant to second (Quora validation: AP 69
against 76, `benchmarks/judge_choice.py`): a thousand answers teach it less than the
bi-encoder's own training taught that model. A residual judge keeps what the bi-encoder
knows: its score is the bi-encoder's calibrated logit (the prior, one number per pair)
plus the cross-encoder's own logit, and the cross-encoder's head starts at zero, so before
its first step the judge *is* the calibrated bi-encoder, and training only has to learn
what reading both texts at once adds.

The prior is looked up by the pair's two texts, in order, because the library's trainer
hands a loss the texts of a batch, not their row numbers.
"""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor, nn


class PriorBinaryCrossEntropyLoss(nn.Module):
    """`BCEWithLogits(judge logit + prior logit, label)`: the judge learns a correction."""

    def __init__(self, model, prior: Mapping[tuple[str, str], float]) -> None:
        super().__init__()
        self.model = model
        self.prior = prior
        self.bce = nn.BCEWithLogitsLoss()

    def forward(self, inputs: list[list[str]], labels: Tensor, prompt: str | None = None,
                task: str | None = None) -> Tensor:
        """The loss of one batch; `inputs` is the two text columns, as the trainer gives
        them to every cross-encoder loss."""
        import torch
        from sentence_transformers.util import batch_to_device

        pairs = list(zip(inputs[0], inputs[1], strict=True))
        features = batch_to_device(self.model.preprocess(pairs, prompt=prompt, task=task),
                                   self.model.device)
        logits = self.model(features)["scores"].view(-1)
        prior = torch.tensor([self.prior[pair] for pair in pairs], dtype=logits.dtype,
                             device=logits.device)
        return self.bce(logits + prior, labels.view(-1).to(logits.dtype))

    def get_config_dict(self) -> dict:
        """What the library records of a loss (nothing here: no card is written)."""
        return {"prior_pairs": len(self.prior)}
