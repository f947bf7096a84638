"""Hybrid matcher: per-score matcher, thresholds, direction score; per-match probabilities and evidence

Revision ID: 0003_matcher
Revises: 0003_windows
Create Date: 2026-12-01 09:40:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0003_matcher'
down_revision = '0003_windows'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.add_column(sa.Column('matcher', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('matcher_version', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('thresholds', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('n_matches', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('direction_score', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('n_direction_matches', sa.Integer(), nullable=True))
    with op.batch_alter_table('matches', schema=None) as batch_op:
        batch_op.add_column(sa.Column('p_realised', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('p_direction', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('realised', sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column('direction', sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column('evidence_sentence', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('shared_terms', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('matches', schema=None) as batch_op:
        for name in ('shared_terms', 'evidence_sentence', 'direction', 'realised', 'p_direction', 'p_realised'):
            batch_op.drop_column(name)
    with op.batch_alter_table('scores', schema=None) as batch_op:
        for name in ('n_direction_matches', 'direction_score', 'n_matches', 'thresholds', 'matcher_version',
                     'matcher'):
            batch_op.drop_column(name)
