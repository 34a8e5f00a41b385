"""What a study's summary judges its best on: the study file's constraints, kept beside the
study (filled in from the stored study files of existing studies), and a summary index that
tells search trials from seed repeats.

Revision ID: 0008
Revises: 0007
"""

import json

import sqlalchemy as sa
import yaml
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def _constraints(spec_text: str) -> str | None:
    """The ``constraints:`` of a stored study file as the store keeps them (None: none)."""
    try:
        data = yaml.safe_load(spec_text)
    except yaml.YAMLError:
        return None
    raw = data.get("constraints") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        return None
    kept = [{"metric": c["metric"], "min": c.get("min"), "max": c.get("max")}
            for c in raw if isinstance(c, dict) and isinstance(c.get("metric"), str)]
    return json.dumps(kept) if kept else None


def upgrade() -> None:
    with op.batch_alter_table("studies") as batch:
        batch.add_column(sa.Column("constraints", sa.Text(), nullable=True))
    studies = sa.table("studies", sa.column("id", sa.Integer), sa.column("spec_text", sa.Text),
                       sa.column("constraints", sa.Text))
    connection = op.get_bind()
    rows = connection.execute(sa.select(studies.c.id, studies.c.spec_text).where(
        studies.c.spec_text.like("%constraints%"))).all()
    for study_id, spec_text in rows:
        found = _constraints(spec_text)
        if found:
            connection.execute(studies.update().where(studies.c.id == study_id)
                               .values(constraints=found))
    op.drop_index("ix_trial_study_state_best", table_name="trials")
    op.create_index("ix_trial_study_summary", "trials",
                    ["study_id", "state", "repeat_of", "best_value"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_trial_study_summary", table_name="trials")
    op.create_index("ix_trial_study_state_best", "trials", ["study_id", "state", "best_value"],
                    unique=False)
    with op.batch_alter_table("studies") as batch:
        batch.drop_column("constraints")
