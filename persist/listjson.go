package persist

import "strconv"

// The listings a client reads on every page open — the channel list (a workspace's every
// channel: 1,000 of them, 450 KB) and the member directory — are encoded by hand, as the event
// envelope is (eventjson.go): encoding/json walked each Channel by reflection and ran every
// time.Time through MarshalJSON, whose output it then checked and compacted again; that was a
// third of the channel list's CPU (docs/performance.md, "Lighter listings"). The output is byte
// for byte encoding/json's for the same value (TestListingJSONMatchesEncodingJSON fills every
// field, so a field added to a type without its line here fails it).

// AppendJSON appends c as encoding/json renders it.
func (c *Channel) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, c.ID)
	b = append(b, `,"route_id":`...)
	b = appendJSONString(b, c.RouteID)
	b = append(b, `,"workspace_id":`...)
	b = appendJSONString(b, c.WorkspaceID)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, c.Name)
	b = appendOptionalField(b, `,"display_title":`, c.DisplayTitle)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, c.Kind)
	b = appendJSONBool(append(b, `,"archived":`...), c.Archived)
	if c.ArchivedAt != nil {
		b = appendJSONTime(append(b, `,"archived_at":`...), *c.ArchivedAt)
	}
	b = appendJSONBool(append(b, `,"external_managed":`...), c.ExternalManaged)
	b = appendOptionalField(b, `,"external_ref":`, c.ExternalRef)
	b = appendOptionalField(b, `,"external_url":`, c.ExternalURL)
	b = appendOptionalField(b, `,"sidebar_section":`, c.SidebarSection)
	b = append(b, `,"visibility":`...)
	b = appendJSONString(b, c.Visibility)
	b = appendOptionalField(b, `,"created_by":`, c.CreatedBy)
	b = appendJSONTime(append(b, `,"created_at":`...), c.CreatedAt)
	b = appendJSONTime(append(b, `,"updated_at":`...), c.UpdatedAt)
	b = strconv.AppendInt(append(b, `,"last_seq":`...), c.LastSeq, 10)
	b = appendOptionalInt(b, `,"last_read_seq":`, c.LastReadSeq)
	b = appendOptionalInt(b, `,"unread_count":`, c.UnreadCount)
	b = appendOptionalInt(b, `,"mention_count":`, c.MentionCount)
	if c.Joined != nil {
		b = appendJSONBool(append(b, `,"joined":`...), *c.Joined)
	}
	if c.Starred != nil {
		b = appendJSONBool(append(b, `,"starred":`...), *c.Starred)
	}
	b = appendOptionalField(b, `,"notification_level":`, c.NotificationLevel)
	if c.MemberCount != nil {
		b = strconv.AppendInt(append(b, `,"member_count":`...), int64(*c.MemberCount), 10)
	}
	return append(b, '}')
}

// AppendChannelsJSON appends {"channels":[…]}, the channel list's answer.
func AppendChannelsJSON(b []byte, list []Channel) []byte {
	b = append(b, `{"channels":[`...)
	for i := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = list[i].AppendJSON(b)
	}
	return append(b, `]}`...)
}

// AppendJSON appends u as encoding/json renders it.
func (u *PublicUser) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, u.ID)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, u.Kind)
	b = appendOptionalField(b, `,"owner_user_id":`, u.OwnerUserID)
	b = append(b, `,"display_name":`...)
	b = appendJSONString(b, u.DisplayName)
	b = appendOptionalField(b, `,"handle":`, u.Handle)
	b = appendOptionalField(b, `,"avatar_url":`, u.AvatarURL)
	b = appendOptionalField(b, `,"time_zone":`, u.TimeZone)
	b = appendOptionalField(b, `,"former_handle":`, u.FormerHandle)
	if u.DeletedAt != nil {
		b = appendJSONTime(append(b, `,"deleted_at":`...), *u.DeletedAt)
	}
	b = appendJSONTime(append(b, `,"created_at":`...), u.CreatedAt)
	return append(b, '}')
}

// AppendJSON appends m as encoding/json renders it.
func (m *DirectoryMember) AppendJSON(b []byte) []byte {
	b = append(b, `{"workspace_id":`...)
	b = appendJSONString(b, m.WorkspaceID)
	b = m.User.AppendJSON(append(b, `,"user":`...))
	b = append(b, `,"role":`...)
	b = appendJSONString(b, m.Role)
	b = appendJSONTime(append(b, `,"joined_at":`...), m.JoinedAt)
	return append(b, '}')
}

// AppendJSON appends a page of the member directory as encoding/json renders it.
func (p *MemberPage[T]) AppendJSON(b []byte, member func(b []byte, m *T) []byte) []byte {
	b = append(b, `{"members":`...)
	if p.Members == nil {
		b = append(b, `null`...)
	} else {
		b = append(b, '[')
		for i := range p.Members {
			if i > 0 {
				b = append(b, ',')
			}
			b = member(b, &p.Members[i])
		}
		b = append(b, ']')
	}
	b = appendOptionalField(b, `,"next_cursor":`, p.NextCursor)
	b = appendJSONBool(append(b, `,"has_more":`...), p.HasMore)
	if p.TotalCount != nil {
		b = strconv.AppendInt(append(b, `,"total_count":`...), int64(*p.TotalCount), 10)
	}
	return append(b, '}')
}

// AppendDirectoryJSON appends a directory page: MemberPage.AppendJSON of DirectoryMembers.
func AppendDirectoryJSON(b []byte, p *MemberPage[DirectoryMember]) []byte {
	return p.AppendJSON(b, func(b []byte, m *DirectoryMember) []byte { return m.AppendJSON(b) })
}

func appendOptionalInt(b []byte, name string, v *int64) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendInt(append(b, name...), *v, 10)
}

func appendJSONBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}
