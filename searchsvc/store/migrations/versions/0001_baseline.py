"""The schema as of searchsvc 0.1: studies, trials, measurements, trial_events.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('studies',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('metric', sa.String(length=200), nullable=False),
    sa.Column('mode', sa.String(length=3), nullable=False),
    sa.Column('searcher', sa.String(length=50), nullable=False),
    sa.Column('spec_text', sa.Text(), nullable=False),
    sa.Column('spec_file', sa.Text(), nullable=False),
    sa.Column('total_trials', sa.Integer(), nullable=True),
    sa.Column('results_dir', sa.Text(), nullable=True),
    sa.Column('created_at', sa.Float(), nullable=False),
    sa.Column('started_at', sa.Float(), nullable=True),
    sa.Column('finished_at', sa.Float(), nullable=True),
    sa.Column('provenance', sa.Text(), nullable=False),
    sa.Column('driver', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('trial_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('study_id', sa.Integer(), nullable=False),
    sa.Column('trial_number', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=30), nullable=False),
    sa.Column('step', sa.Integer(), nullable=True),
    sa.Column('data', sa.Text(), nullable=False),
    sa.Column('recorded_at', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['study_id'], ['studies.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_event_study_trial', 'trial_events', ['study_id', 'trial_number'],
                    unique=False)
    op.create_table('trials',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('study_id', sa.Integer(), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('config', sa.Text(), nullable=False),
    sa.Column('arm', sa.Text(), nullable=False),
    sa.Column('seed', sa.Integer(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('started_at', sa.Float(), nullable=True),
    sa.Column('finished_at', sa.Float(), nullable=True),
    sa.Column('best_value', sa.Float(), nullable=True),
    sa.Column('best_step', sa.Integer(), nullable=True),
    sa.Column('last_step', sa.Integer(), nullable=True),
    sa.Column('node', sa.String(length=255), nullable=True),
    sa.Column('checkpoints', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['study_id'], ['studies.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('study_id', 'number', name='uq_trial_number')
    )
    op.create_index(op.f('ix_trials_study_id'), 'trials', ['study_id'], unique=False)
    op.create_table('measurements',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('trial_id', sa.Integer(), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('step', sa.Integer(), nullable=False),
    sa.Column('value', sa.Float(), nullable=True),
    sa.Column('metrics', sa.Text(), nullable=False),
    sa.Column('recorded_at', sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(['trial_id'], ['trials.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('ix_measurement_trial_step', 'measurements',
                    ['trial_id', 'attempt', 'step'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_measurement_trial_step', table_name='measurements')
    op.drop_table('measurements')
    op.drop_index(op.f('ix_trials_study_id'), table_name='trials')
    op.drop_table('trials')
    op.drop_index('ix_event_study_trial', table_name='trial_events')
    op.drop_table('trial_events')
    op.drop_table('studies')
