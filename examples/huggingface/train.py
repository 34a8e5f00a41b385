"""A small BERT classifier built from a config (nothing downloaded), trained with the Hugging
Face ``Trainer`` on generated token sequences and tuned by searchsvc. The task: does a
sequence hold token 7?

The lines that matter: the callback, evaluating and saving once per epoch, the step budget as
``num_train_epochs``, the trial's seed and folder in ``TrainingArguments``, and
``resume_from_checkpoint=resume_checkpoint()``.
"""

from __future__ import annotations

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

from searchsvc import sdk
from searchsvc.integrations.huggingface import SearchsvcCallback, resume_checkpoint

VOCAB, LENGTH = 32, 12


class Sequences(torch.utils.data.Dataset):
    def __init__(self, count: int, seed: int):
        generator = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(8, VOCAB, (count, LENGTH), generator=generator)
        holds = torch.rand(count, generator=generator) < 0.5
        where = torch.randint(0, LENGTH, (count,), generator=generator)
        self.ids[holds, where[holds]] = 7
        self.labels = holds.long()

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


def train(config: dict) -> None:
    model = BertForSequenceClassification(BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=LENGTH, num_labels=2))
    args = TrainingArguments(
        output_dir=str(sdk.trial_dir() / "hf"), eval_strategy="epoch", save_strategy="epoch",
        num_train_epochs=sdk.max_steps(3), learning_rate=config["learning_rate"],
        per_device_train_batch_size=32, seed=sdk.trial_context().seed, report_to=[],
        save_total_limit=1, logging_strategy="no", disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=Sequences(1024, seed=0),
                      eval_dataset=Sequences(256, seed=1), callbacks=[SearchsvcCallback()])
    trainer.train(resume_from_checkpoint=resume_checkpoint())


if __name__ == "__main__":
    print(sdk.run_locally(train, {"learning_rate": 1e-2}, metric="eval_loss", max_steps=3))
