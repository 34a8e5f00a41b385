"""Measurement telemetry: what the trial's worker measured over each step (step time,
samples/s, CPU, RSS, GPU utilisation and memory, data wait), as JSON beside the metrics.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.add_column(sa.Column("telemetry", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.drop_column("telemetry")
