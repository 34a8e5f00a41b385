"""An index that covers a study's summary (its trials counted by state, their best value).

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_trial_study_state_best", "trials", ["study_id", "state", "best_value"],
                    unique=False)


def downgrade() -> None:
    op.drop_index("ix_trial_study_state_best", table_name="trials")
