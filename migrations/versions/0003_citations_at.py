"""Citation snapshot date per paper; API fetch checkpoints

Revision ID: 0003_citations_at
Revises: 0002
Create Date: 2026-12-01 09:10:00
"""
from alembic import op
import sqlalchemy as sa


revision = '0003_citations_at'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('papers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('citations_at', sa.Date(), nullable=True))
    op.create_table('fetch_checkpoints',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('source', sa.String(length=32), nullable=False),
    sa.Column('query', sa.JSON(), nullable=False),
    sa.Column('cursor', sa.Text(), nullable=True),
    sa.Column('done', sa.Boolean(), nullable=False),
    sa.Column('state', sa.JSON(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )


def downgrade() -> None:
    op.drop_table('fetch_checkpoints')
    with op.batch_alter_table('papers', schema=None) as batch_op:
        batch_op.drop_column('citations_at')
