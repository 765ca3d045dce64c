package persist

import "context"

// Instance-wide settings keys.
const (
	// SettingDefaultWorkspace is the workspace that sign-in methods join new users to.
	SettingDefaultWorkspace = "default_workspace_id"
	// SettingPinnedOwner is the user dev bootstrap makes owner (natter admin owner pin).
	SettingPinnedOwner = "pinned_owner_user_id"
)

// SettingGet returns an instance setting, or "" when unset.
func (tx *Tx) SettingGet(ctx context.Context, key string) (string, error) {
	var v string
	err := tx.queryRow(ctx, `SELECT coalesce((SELECT value FROM instance_settings WHERE key = $1), '')`, key).Scan(&v)
	return v, err
}

// SettingSet stores an instance setting.
func (tx *Tx) SettingSet(ctx context.Context, key, value string) error {
	_, err := tx.exec(ctx, `INSERT INTO instance_settings (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}
