"""Each idea's origin (file, generator, topic, title); judge dimensions interestingness and novel

Revision ID: 0006_idea_origin
Revises: 0003_matcher
Create Date: 2026-12-01 17:30:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0006_idea_origin'
down_revision = '0003_matcher'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('ideas', schema=None) as batch_op:
        batch_op.add_column(sa.Column('origin_file', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('generator', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('topic', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('title', sa.Text(), nullable=True))
    with op.batch_alter_table('judge_scores', schema=None) as batch_op:
        batch_op.add_column(sa.Column('interestingness', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('novel', sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('judge_scores', schema=None) as batch_op:
        batch_op.drop_column('novel')
        batch_op.drop_column('interestingness')
    with op.batch_alter_table('ideas', schema=None) as batch_op:
        for name in ('title', 'topic', 'generator', 'origin_file'):
            batch_op.drop_column(name)
