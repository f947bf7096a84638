"""LLM-judge scores per idea

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 23:40:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('judge_scores',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('idea_pk', sa.Integer(), nullable=False),
    sa.Column('judge', sa.String(length=128), nullable=False),
    sa.Column('novelty', sa.Float(), nullable=True),
    sa.Column('feasibility', sa.Float(), nullable=True),
    sa.Column('impact', sa.Float(), nullable=True),
    sa.Column('overall', sa.Float(), nullable=True),
    sa.Column('imported_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['idea_pk'], ['ideas.pk'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('idea_pk', 'judge')
    )
    with op.batch_alter_table('judge_scores', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_judge_scores_idea_pk'), ['idea_pk'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('judge_scores', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_judge_scores_idea_pk'))
    op.drop_table('judge_scores')
