"""Measurement dimensionality: the participation ratio and stable rank of each watched layer's
activations that ``sdk.watch`` measured over a step, as JSON beside the metrics.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.add_column(sa.Column("dimensionality", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.drop_column("dimensionality")
