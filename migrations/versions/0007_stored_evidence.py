"""What a live answer says, kept by stored runs: per match p_method and the problem's evidence sentence; per score the
idea's warnings and shape

Revision ID: 0007_stored_evidence
Revises: 0006_idea_origin
Create Date: 2026-12-01 20:20:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0007_stored_evidence'
down_revision = '0006_idea_origin'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.add_column(sa.Column('warnings', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('shape', sa.String(length=16), nullable=True))
    with op.batch_alter_table('matches', schema=None) as batch_op:
        batch_op.add_column(sa.Column('p_method', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('problem_sentence', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('matches', schema=None) as batch_op:
        batch_op.drop_column('problem_sentence')
        batch_op.drop_column('p_method')
    with op.batch_alter_table('scores', schema=None) as batch_op:
        batch_op.drop_column('shape')
        batch_op.drop_column('warnings')
