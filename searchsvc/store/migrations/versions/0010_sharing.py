"""Sharing a cluster: tokens carry the highest study priority they may submit (`searchsvc
tokens create --max-priority`; 0 for the tokens made before), and users may have quotas, the
most CPUs and GPUs their studies hold at once (`searchsvc quota set`).

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("max_priority", sa.Integer(), nullable=False,
                                   server_default="0"))
    op.create_table(
        "quotas",
        sa.Column("user", sa.String(100), primary_key=True),
        sa.Column("cpu", sa.Float(), nullable=True),
        sa.Column("gpu", sa.Float(), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("quotas")
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("max_priority")
